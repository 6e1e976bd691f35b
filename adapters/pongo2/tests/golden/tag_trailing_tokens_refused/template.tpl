{% sum_by bank.transactions by "amount" extra %}
