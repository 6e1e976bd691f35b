{{ 250000|percent_of:1000000 }} {{ "1"|percent_of:"3" }} {{ t.r.0.part|percent_of: t.r.0.total }} {{ 1|percent_of:8 }}
