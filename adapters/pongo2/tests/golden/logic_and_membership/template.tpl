{% if a.t.0.x and a.t.0.y %}and{% endif %} {% if a.t.0.zero or a.t.0.y %}or{% endif %} {% if not a.t.0.zero %}not{% endif %} {% if !a.t.0.x %}bang{% else %}nobang{% endif %}
{% if "ell" in a.t.0.word %}substr{% endif %} {% if "k" in a.t.0.map %}key{% endif %} {% if 2 in a.t.0.list %}item{% endif %} {% if "2" in a.t.0.list %}bad{% else %}typed{% endif %}
{% if a.t.0.x == 1 %}eq{% endif %} {% if a.t.0.x != 2 %}ne{% endif %} {% if a.t.0.x <> 2 %}ne2{% endif %} {% if a.t.0.x >= 1 and a.t.0.x <= 1 %}range{% endif %}
{% if 1 == 1.0 %}same{% else %}int-vs-float{% endif %} {% if "1" == 1 %}same{% else %}string-vs-int{% endif %}
{% if a.t.0.x or a.t.0.zero and a.t.0.zero %}right-assoc{% else %}left-assoc{% endif %}
