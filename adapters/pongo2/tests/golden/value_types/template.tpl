numeric text: {{ v.t.0.amount }} {{ v.t.0.amount|length }} uuid: {{ v.t.0.uuid }}
integer: {{ v.t.0.qty }} {{ v.t.0.qty + 1 }} time: {{ v.t.0.at }} jsonb: {{ v.t.0.meta.address.city }} {{ v.t.0.meta.tags.1 }}
null: [{{ v.t.0.gone }}] {% if not v.t.0.gone %}is nil{% endif %} table printed: {{ v.t }} row printed: {{ v.t.0 }}
date: {{ v.t.0.day }} {{ v.t.0.day|date:"02/01/2006" }} timestamp: {{ v.t.0.local }} {{ v.t.0.local|date:"02/01/2006 15:04" }}
