{% for a in bank.accounts %}{% if a.status == "active" and a.branch == 12 %}A{% elif a.status == "closed" %}C{% else %}?{% endif %}{% endfor %}
