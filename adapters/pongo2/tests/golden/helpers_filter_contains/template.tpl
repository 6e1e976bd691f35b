{% for a in filter(bank.accounts, "status", "active") %}{{ a.id }} {% endfor %}
{{ filter(bank.accounts, "branch", 12)|length }} {{ filter(bank.accounts, "branch", "12")|length }} {{ filter(bank.accounts, "status", "none")|length }}
{% if contains(bank.accounts.0.holder, "silva") %}ci{% endif %} {% if contains(bank.accounts.0.holder, "zzz") %}no{% else %}absent{% endif %}
not a list: [{% for x in filter(bank.accounts.0.id, "a", "b") %}{{ x }}{% endfor %}]
