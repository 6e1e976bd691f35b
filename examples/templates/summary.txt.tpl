Bank data summary
=================
Accounts:     {{ bank.accounts|length }}
Transactions: {{ bank.transactions|length }}

{% for a in bank.accounts -%}
{{ a.account_id }}  {{ a.holder_name }} ({{ a.currency }}, {{ a.branch }})
{% for b in bank.balances if b.account_id == a.account_id -%}
    balance as of {{ b.as_of }}: {{ b.balance }}
{% endfor -%}
{% for t in bank.transactions if t.account_id == a.account_id -%}
    {{ t.booked_on }}  {{ t.direction }}  {{ t.amount }}  {{ t.category }}
{% endfor %}
{% endfor -%}
