{% with ops = bank.transactions|add_day:"created_at"|add_signed:"amount" %}{% for o in ops %}{{ o.id }}:{{ o.dia }}:{{ o.signed }} {% endfor %}
{% sum_by ops by "signed" %} {% last_item_by_group ops group_by "dia" order_by "created_at" as last %}{% for l in last %}{{ l.dia }}={{ l.id }} {% endfor %}{% endwith %}
