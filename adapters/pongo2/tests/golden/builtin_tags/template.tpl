{% for a in bank.accounts %}{% cycle "odd" "even" %} {% endfor %}
{% filter upper %}shout {{ bank.accounts.0.id }}{% endfilter %}|{% firstof nothing "" bank.accounts.0.holder %}|{% firstof nothing "<b>"|safe %}
{% for a in bank.accounts %}{% ifchanged a.branch %}[{{ a.branch }}]{% else %}.{% endifchanged %}{% endfor %}
{% ifequal bank.accounts.0.branch 12 %}twelve{% else %}other{% endifequal %} {% ifnotequal bank.accounts.0.status "active" %}x{% else %}active{% endifnotequal %}
{% lorem 5 w %}|{% templatetag openblock %} {% templatetag closevariable %}|{% widthratio 175 200 100 %}|{% widthratio 50 100 200 %}
{% spaceless %}<p>
  <b>x</b>
</p>{% endspaceless %}
{% comment %}{{ bank.hidden.field }} never rendered{% endcomment %}done
