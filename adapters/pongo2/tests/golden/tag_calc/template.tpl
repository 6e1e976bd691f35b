{% calc (100 + 200) * 1.2 %}|{% calc -2 ** 2 %}|{% calc 2 ** 3 ** 2 %}|{% calc 10 - 2 - 3 %}|{% calc 1 / 3 %}|{% calc (1 / 3) * 3 %}
{% calc bank.accounts.0.balance * 2 %}|{% calc bank.accounts.9.balance + 1 %}|{% calc nothing + 1.5 %}|{% calc 0.1 ** 3 %}|{% calc 2.5 ** 0.5 %}
{% for t in bank.transactions %}{% calc t.amount + 1 %} {% endfor %}
