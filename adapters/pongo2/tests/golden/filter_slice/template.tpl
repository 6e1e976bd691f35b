{{ l.t.0.items|slice:":2"|join:"," }}|{{ l.t.0.items|slice:"2:"|join:"," }}|{{ l.t.0.items|slice:"-2:"|join:"," }}|{{ l.t.0.items|slice:":-1"|join:"," }}|{{ l.t.0.items|slice:"1:3"|join:"," }}|{{ l.t.0.items|slice:"3:1"|join:"," }}
{{ "2024-01-15T10:00:00Z"|slice:":10" }}|{{ "héllo"|slice:"1:3" }}|{{ "abcdef"|slice:"-3:" }}
{% for a in bank.accounts|slice:":2" %}{{ a.id }} {% endfor %}
