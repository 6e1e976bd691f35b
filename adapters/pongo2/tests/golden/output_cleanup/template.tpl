<?xml version="1.0" encoding="UTF-8"?>
<values>150000.00 25.00% 007.50 {{ 1000|floatformat:2 }} 1.1.2.00.000 v1.10.0 12.305 3.10</values>
{{ 2.5 }} {{ t.r.0.f }}
