{{ bank.accounts.0.id }} {{ bank.accounts.1.holder }} {{ bank.accounts[2].id }}
past end: [{{ bank.accounts.9.id }}] missing field: [{{ bank.accounts.0.nope }}] attribute of nothing: [{{ bank.accounts.9.id.x }}]
{% for a in bank.accounts %}{{ forloop.Counter }}={{ a.id }}({{ a.branch }}) {% endfor %}
nil compares as 0: {% if bank.accounts.9.balance == 0 %}eq{% else %}ne{% endif %} {% if bank.accounts.9.balance < 1 %}lt{% endif %}
