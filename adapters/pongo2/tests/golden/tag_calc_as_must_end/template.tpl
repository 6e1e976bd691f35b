{% calc 1 as c + 2 %}
