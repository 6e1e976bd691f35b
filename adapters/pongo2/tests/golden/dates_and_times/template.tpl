raw: {{ bank.transactions.0.created_at }}
date: {{ bank.transactions.0.created_at|date:"02/01/2006 15:04" }} {{ bank.accounts.0.opened|date:"20060102" }} {{ "2024-03-05T14:07:09Z"|date:"Jan 2, 2006 3:04pm" }}
time: {{ bank.transactions.0.created_at|time:"15:04:05" }}
parts: {{ bank.transactions.0.created_at.Year }}-{{ bank.transactions.0.created_at.Day }}
compare: {% if bank.transactions.1.created_at > bank.transactions.0.created_at %}later{% endif %}
