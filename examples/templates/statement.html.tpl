<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Account statements</title>
  <style>
    body { font-family: sans-serif; margin: 2em; }
    table { border-collapse: collapse; width: 100%; }
    th, td { border: 1px solid #ccc; padding: 4px 8px; }
    td.amount { text-align: right; }
  </style>
</head>
<body>
  <h1>Account statements</h1>
  {% for a in bank.accounts %}
  <section>
    <h2>{{ a.holder_name }} ({{ a.account_id }})</h2>
    <p>Branch {{ a.branch }}, opened {{ a.opened_on }}, currency {{ a.currency }}.</p>
    <table>
      <thead>
        <tr><th>Booked on</th><th>Reference</th><th>Category</th><th>Debit</th><th>Credit</th></tr>
      </thead>
      <tbody>
        {% for t in filter(bank.transactions, "account_id", a.account_id) %}
        <tr>
          <td>{{ t.booked_on }}</td>
          <td>{{ t.transaction_id }}</td>
          <td>{{ t.category }}</td>
          <td class="amount">{% if t.direction == "debit" %}{{ t.amount }}{% endif %}</td>
          <td class="amount">{% if t.direction == "credit" %}{{ t.amount }}{% endif %}</td>
        </tr>
        {% endfor %}
      </tbody>
    </table>
    <p>Balances:
      {% for b in filter(bank.balances, "account_id", a.account_id) %}
      {{ b.as_of }}: {{ b.balance }} {{ a.currency }}{% if not forloop.Last %};{% endif %}
      {% endfor %}
    </p>
  </section>
  {% endfor %}
</body>
</html>
