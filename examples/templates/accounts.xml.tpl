<?xml version="1.0" encoding="UTF-8"?>
<accounts source="bank">
{%- for a in bank.accounts %}
  <account id="{{ a.account_id }}" currency="{{ a.currency }}">
    <holder>{{ a.holder_name }}</holder>
    <branch>{{ a.branch }}</branch>
    <openedOn>{{ a.opened_on }}</openedOn>
    <balances>
    {%- for b in bank.balances %}{% if b.account_id == a.account_id %}
      <balance asOf="{{ b.as_of }}">{{ b.balance }}</balance>
    {%- endif %}{% endfor %}
    </balances>
  </account>
{%- endfor %}
</accounts>
