{# As in the original, "name:a.b" anywhere is rewritten as a schema-qualified table: write "percent_of: t.r.0.total" #}{{ t.r.0.part|percent_of:t.r.0.total }}
