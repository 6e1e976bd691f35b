{% date_time "YYYY-MM-dd HH:mm:ss" %}|{% date_time "dd/MM/YYYY" %}|{% date_time "DD-YYYY" %}
{% now "2006-01-02 15:04" %}|{% now "Mon Jan 2 2006" fake %}
