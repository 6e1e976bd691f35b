{% for a in bank.accounts|where:"status:active" %}{{ a.id }} {% endfor %}
{{ bank.accounts|where:"branch:12"|length }} {{ bank.transactions|sum:"amount" }} {{ bank.transactions|where:"status:posted"|sum:"amount" }}
{{ bank.transactions|count:"status:posted" }} {{ bank.transactions|count:"direction:debit" }} {{ bank.accounts|where:"status:none"|length }}
nested: {{ o.t|where:"address.state:SP"|length }} {{ o.t|sum:"price.value" }}
