Hello {{ bank.accounts.0.holder }}!{# comentário — um comentário #}
{# {{ bank.secret.x }} is not read #}Literal {{ "text" }} and {{ 'single' }} and {{ "esc\"aped" }}.
{{ 42 }} {{ -7 }} {{ 1.5 }} {{ true }} {{ false }} {{ nothing }}.
