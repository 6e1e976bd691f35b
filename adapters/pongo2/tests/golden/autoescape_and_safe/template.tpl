{{ t.r.0.html }}|{{ t.r.0.html|safe }}|{{ t.r.0.html|escape }}|{{ t.r.0.html|safe|escape }}
{% autoescape off %}{{ t.r.0.html }}{% endautoescape %}|{% autoescape on %}{{ "<b>" }}{% endautoescape %}
{{ t.r.0.n }} {{ t.r.0.quote }} {{ t.r.0.html|length }}
{% set s = t.r.0.html|safe %}{{ s }}
