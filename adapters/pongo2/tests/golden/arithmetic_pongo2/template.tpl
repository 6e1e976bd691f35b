{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7.0 / 2 }} {{ 7 % 3 }} {{ 2 ^ 10 }} {{ -3 + 1 }}
string + : {{ n.v.0.s + 5 }} {{ 5 + n.v.0.s }} {{ "a" + 1.5 }}
string * float: {{ n.v.0.s * 1.5 }} string * int: {{ n.v.0.s * 2 }} string - float: {{ n.v.0.s - 0.25 }} string - int: {{ n.v.0.s - 1 }}
compare: {% if n.v.0.half > 0 %}gt{% else %}not-gt{% endif %} {% if n.v.0.half > 0.0 %}fgt{% endif %} {% if n.v.0.s > 10 %}gt10{% else %}le10{% endif %}
int/float: {{ 3 * 1.0 }} {{ 10 / 4 }} {{ 10 / 4.0 }}
lists: {{ n.v + n.v }} {% set both = n.v|add: n.v %}{{ both|length }}
