{{ "hello there"|capfirst }}|{{ "test"|center:10 }}|{{ "a-b-c"|cut:"-" }}|{{ "MiXeD"|lower }}|{{ "mixed"|upper }}|{{ "hELLO wORLD-x"|title }}
{{ "ab"|ljust:5 }}|{{ "ab"|rjust:5 }}|{{ "I'm \"q\""|addslashes|safe }}
{{ "one two  three"|wordcount }}|{{ "Joel is a slug"|truncatechars:9 }}|{{ "a b c d e"|truncatewords:2 }}|{{ "abc"|make_list|join:"," }}|{{ "a,b,,c"|split:","|length }}
{{ "1-800-FLOWERS"|phone2numeric }}|{{ "?q=a b&c"|iriencode }}|{{ "a b&c=d/é"|urlencode }}|{{ "x'\"<>y"|escapejs }}
{{ t.r.0.yes|yesno }}|{{ t.r.0.no|yesno:"sim,não" }}|{{ t.r.0.nothing|yesno:"s,n,talvez" }}|{{ 1|pluralize }}|{{ 2|pluralize }}|{{ 2|pluralize:"y,ies" }}
{{ t.r.0.nothing|default:"n/a" }}|{{ ""|default:"empty" }}|{{ t.r.0.nothing|default_if_none:"none" }}|{{ ""|default_if_none:"x" }}|{{ t.r.0.list|length }}|{{ "héllo"|length }}|{{ t.r.0.list|length_is:3 }}
{{ t.r.0.list|first }}|{{ t.r.0.list|last }}|{{ "héllo"|first }}|{{ 1234567890|get_digit:2 }}|{{ 21|divisibleby:3 }}|{{ "5.6"|float }}|{{ "5.6"|integer }}|{{ 5|add:2 }}|{{ "a"|add:2 }}|{{ 1.5|add:1 }}
{{ t.r.0.lines|linebreaksbr }}|{{ t.r.0.lines|linenumbers }}|{{ "one two three four five"|wordwrap:2 }}
