{% for a in bank.accounts %}{{ forloop.Counter }}/{{ forloop.Counter0 }}/{{ forloop.Revcounter }}/{{ forloop.Revcounter0 }}/{{ forloop.First }}/{{ forloop.Last }} {% endfor %}
{% for a in bank.accounts reversed %}{{ a.id }} {% endfor %}
{% for x in m.t.0.nums sorted %}{{ x }} {% endfor %}
{% for k, v in m.t.0.obj %}{{ k }}={{ v }};{% endfor %}
{% for x in m.t.0.none %}never{% empty %}empty{% endfor %}
{% for o in m.t.0.nums %}{% for i in m.t.0.nums %}{% if forloop.Last %}{{ forloop.Parentloop.Counter }}{% endif %}{% endfor %}{% endfor %}
lowercase django names print nothing: [{% for x in m.t.0.nums %}{{ forloop.counter }}{% endfor %}]
{% for c in "abc" %}{{ c }}-{% endfor %}
