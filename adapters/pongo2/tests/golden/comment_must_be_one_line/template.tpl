{# one
two #}