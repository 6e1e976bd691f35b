sum={% sum_by bank.transactions by "amount" %} posted={% sum_by bank.transactions by "amount" if status == "posted" %}
count={% count_by bank.transactions %} credits={% count_by bank.transactions if direction == "credit" %}
avg={% avg_by bank.accounts by "balance" %} avg3={% avg_by t.r by "v" %}
min={% min_by bank.accounts by "balance" %} max={% max_by bank.accounts by "balance" %}
empty={% sum_by bank.accounts|where:"status:none" by "balance" %} {% avg_by bank.accounts|where:"status:none" by "balance" %} {% min_by bank.accounts|where:"status:none" by "balance" %}
outer var in condition: {% with wanted = "A-1" %}{% count_by bank.transactions if account_id == wanted %}{% endwith %}
