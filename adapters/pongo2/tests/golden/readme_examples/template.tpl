{{ bank.accounts.0.holder }}
{{ bank.accounts.0.balance }}
{# comentário #}ok
[ {{- "x" -}} ]
{% if bank.accounts.0.status == "active" %}on{% elif bank.accounts.0.status == "closed" %}off{% else %}?{% endif %}
{% for a in bank.accounts %}{{ forloop.Counter }}={{ a.id }}{% if not forloop.Last %},{% endif %}{% endfor %}
{% for a in bank.accounts reversed %}{{ a.id }}{% endfor %}
{% for a in bank.accounts|where:"status:none" %}x{% empty %}no rows{% endfor %}
{% with a = bank.accounts.2 %}{{ a.holder }}{% endwith %}
{% set n = 2 %}{{ n * 10 }}
{% autoescape off %}{{ bank.accounts.0.holder }}{% endautoescape %}
{% comment %}not printed{% endcomment %}done
{% for a in bank.accounts %}{% cycle "odd" "even" %}{% if not forloop.Last %}/{% endif %}{% endfor %}
{% filter upper %}total{% endfilter %}
{% firstof bank.accounts.9.id bank.accounts.1.id %}
{% for t in bank.transactions %}{% ifchanged t.account_id %}[{{ t.account_id }}]{% endifchanged %}{% endfor %}
{% ifequal bank.accounts.0.kind "checking" %}yes{% endifequal %}
{% ifnotequal 1 2 %}differ{% endifnotequal %}
{% lorem 3 w %}
{% macro money(v) %}${{ v|floatformat:2 }}{% endmacro %}{{ money(bank.accounts.2.balance) }}
{% now "2006-01-02 15:04" %}
{% spaceless %}<p> <b>x</b> </p>{% endspaceless %}
{% templatetag openvariable %} x {% templatetag closevariable %}
{% widthratio 30 120 100 %}
{% verbatim %}{{ raw }}{% endverbatim %}
{% sum_by bank.transactions by "amount" if status == "posted" %}
{% count_by bank.transactions if direction == "credit" %}
{% avg_by bank.accounts by "balance" %}
{% min_by bank.accounts by "balance" %} / {% max_by bank.accounts by "balance" %}
{% sum_by bank.transactions by "amount" as total %}total={{ total }}
{% calc (bank.accounts.0.balance + 100) * 2 %}
{% calc -2 ** 2 %}
{% calc 10 / 4 as q %}q={{ q }}
{% date_time "dd/MM/YYYY HH:mm" %}
{% last_item_by_group bank.transactions group_by "account_id" order_by "created_at" as last %}{% for t in last %}{{ t.account_id }}={{ t.id }};{% endfor %}
{% counter "c" %}{% counter "c" %}{% counter "d" %}{% counter_show "c" "d" %}
{{ bank.transactions.1.amount|percent_of: bank.transactions.0.amount }}
{{ bank.accounts.0.id|slice_str:"0:1" }}
{{ "007.50"|strip_zeros }}
{{ bank.accounts.0.holder|replace:"Ana:Anna" }}
{{ bank.accounts|where:"status:active"|length }}
{{ bank.transactions|sum:"amount" }}
{{ bank.transactions|count:"status:posted" }}
{% with rows = bank.transactions|add_day:"created_at" %}{{ rows.0.dia }}{% endwith %}
{% with rows = bank.transactions|add_signed:"amount" %}{{ rows.1.signed }}{% endwith %}
{{ filter(bank.accounts, "kind", "savings")|length }}
{% with a = filter(bank.accounts, "id", "A-3")[0] %}{{ a.holder }}{% endwith %}
{% if contains(bank.accounts.0.holder, "silva") %}found{% endif %}
{{ bank.transactions.0.created_at|date:"02/01/2006 15:04" }}
{{ bank.accounts.2.balance|floatformat:2 }}
{{ bank.accounts.9.id|default:"-" }}
{{ bank.accounts.0.holder|lower }}
{{ "abcdef"|slice:"1:3" }}
{{ bank.accounts|length }}
{{ "<b>"|safe }}
{% autoescape off %}{{ "<b>"|e }}{% endautoescape %}
{{ "a,b,c"|split:","|join:" + " }}
{{ true|yesno:"yes,no" }}
{{ bank.accounts.0.branch + 1 }} {{ bank.accounts.0.balance * 2 }} {{ "a" + 1 }}
