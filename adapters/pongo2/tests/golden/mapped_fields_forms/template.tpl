{{ bank.accounts.0.holder }}{% for t in bank.transactions %}{{ t.amount }}{% endfor %}
{% with a = filter(bank.accounts, "kind", "checking")[0] %}{{ a.balance }}{% endwith %}
{% set rows = bank.accounts %}{{ rows|where:"status:active"|length }}
{% sum_by bank.transactions by "amount" if direction == "credit" and status == "posted" %}
{% calc bank.accounts.0.branch + 1 %}
{{ bank:public.audit.0.who }}
