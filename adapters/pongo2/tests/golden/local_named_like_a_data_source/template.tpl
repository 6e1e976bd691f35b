{% for bank in bank.accounts %}{{ bank.id }} {% endfor %}after: {{ bank.accounts.0.holder }}
