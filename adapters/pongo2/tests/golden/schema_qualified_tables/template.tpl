{% for o in pg:sales.orders %}{{ o.id }}={{ o.total }} {% endfor %}
first: {{ pg:sales.orders.0.id }}
sum: {% calc pg:sales.orders.0.total + pg:sales.orders.1.total %}
