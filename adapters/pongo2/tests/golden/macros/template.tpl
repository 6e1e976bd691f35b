{% macro money(v, currency="BRL") %}{{ currency }} {{ v|floatformat:2 }}{% endmacro %}{{ money(10) }}|{{ money(2.5, "USD") }}
{% macro row(a) %}<{{ a.id }}:{{ a.balance }}>{% endmacro %}{% for a in bank.accounts %}{{ row(a) }}{% endfor %}
