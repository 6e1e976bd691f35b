{% sum_by bank.transactions by "amount" as total %}[{{ total }}] {% count_by bank.transactions if status == "posted" as n %}{{ n + 1 }} {% avg_by t.r by "v" as avg %}{{ avg }} {% min_by bank.accounts by "balance" as lo %}{% max_by bank.accounts by "balance" as hi %}{{ lo }}..{{ hi }}
{% calc 1 + 2 as c %}[{{ c }}] {% calc c * 10 as d %}{{ d }} {% calc bank.accounts.0.balance * 2 as twice %}{{ twice }}
{% date_time "YYYY-MM-dd" as today %}today={{ today }}
{% for a in bank.accounts %}{% sum_by bank.transactions by "amount" if account_id == a.id as per %}{{ a.id }}={{ per }} {% endfor %}[{{ per }}]
{% if total > 1000 %}over{% endif %} {% with x = 1 %}{% calc x + 1 as inner %}{{ inner }}{% endwith %}[{{ inner }}]
