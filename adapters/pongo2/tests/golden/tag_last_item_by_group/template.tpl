{% last_item_by_group bank.transactions group_by "account_id" order_by "created_at" as latest %}{% for t in latest %}{{ t.account_id }}:{{ t.id }} {% endfor %}
{% last_item_by_group bank.transactions group_by "account_id,direction" order_by "created_at" if status == "posted" as lp %}{% for t in lp %}{{ t.account_id }}/{{ t.direction }}:{{ t.id }} {% endfor %}
