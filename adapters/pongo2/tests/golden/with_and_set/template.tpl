{% with first = bank.accounts.0 n = 2 %}{{ first.id }} {{ n }}{% endwith %}[{{ first.id }}]
{% with bank.accounts.1 as second %}{{ second.holder }}{% endwith %}
{% set total = 10 %}{% set total = total + 5 %}{{ total }}
{% with acc = filter(bank.accounts, "id", "A-3")[0] %}{{ acc.holder }} {{ acc.balance }}{% endwith %}
{% for a in bank.accounts %}{% set inner = a.id %}{% endfor %}outside: [{{ inner }}]
{% with acc2 = bank.accounts.2 %}{% endwith %}out of scope: [{{ acc2.kind }}]
