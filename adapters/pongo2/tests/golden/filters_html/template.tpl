{{ h.t.0.text|linebreaks|safe }}
{{ "<p>Hello <b>World</b></p>"|striptags }}|{{ "<b>bold</b> <i>it</i>"|removetags:"b"|safe }}
{{ "<p>This is a long test which will be cut.</p>"|truncatechars_html:12 }}|{{ "<p>one two three four</p>"|truncatewords_html:2 }}
{{ "visit www.example.com now"|urlize|safe }}
{{ "mail demo@example.com or https://example.org/a-long-path"|urlizetrunc:15|safe }}
