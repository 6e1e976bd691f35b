Bank data summary
=================
Accounts:     {{ bank.accounts|length }}
Transactions: {{ bank.transactions|length }}

{% for a in bank.accounts -%}
{{ a.account_id }}  {{ a.holder_name }} ({{ a.currency }}, {{ a.branch }})
{% for b in filter(bank.balances, "account_id", a.account_id) -%}
    balance as of {{ b.as_of }}: {{ b.balance }}
{% endfor -%}
{% for t in filter(bank.transactions, "account_id", a.account_id) -%}
    {{ t.booked_on }}  {{ t.direction }}  {{ t.amount }}  {{ t.category }}
{% endfor %}
{% endfor -%}
