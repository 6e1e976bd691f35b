transaction_id,account_id,booked_on,direction,amount,currency,category
{% for t in bank.transactions -%}
{{ t.transaction_id }},{{ t.account_id }},{{ t.booked_on }},{{ t.direction }},{{ t.amount }},{{ t.currency }},{{ t.category }}
{% endfor -%}
