<ul>
  {%- for a in bank.accounts %}
  <li>{{- a.id -}}  </li>
  {%- endfor %}
</ul>
[  {{- "x" -}}  ]
