{{ t.r.0.html|e }}|{{ "<b>"|e }}|{{ t.r.0.quote|e|safe }}
{% autoescape off %}{{ "<i>"|e }}{% endautoescape %}
