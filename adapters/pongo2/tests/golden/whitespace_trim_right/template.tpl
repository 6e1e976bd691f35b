<p>
{% if true -%}
   yes
{%- endif %}
</p>
{% for a in bank.accounts -%}
  {{ a.id }}
{% endfor -%}
  end
