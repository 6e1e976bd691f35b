{{ 34.23234|floatformat }}|{{ 34.0|floatformat }}|{{ 34.26|floatformat:3 }}|{{ "34.23234"|floatformat }}|{{ 1000|floatformat:2 }}|{{ 1000|floatformat:"2" }}|{{ 39.56|floatformat:"0" }}|{{ 34.26|floatformat:"-3" }}
{{ 3.14159|stringformat:"%.2f" }}|{{ 42|stringformat:"%05d" }}|{{ "x"|stringformat:"[%5s]" }}|{{ "x"|stringformat:"%d" }}|{{ 7|stringformat:"%x" }}
float printing: {{ 1.5 }} {{ 0.1 }} {{ 2.0 }} {{ 1.0|float }} {{ n.v.0.f }} {{ n.v.0.i }}
