{{ "12345678901"|slice_str:"0:8" }}|{{ "abc"|slice_str:"1:99" }}|{{ "abc"|slice_str:"-5:2" }}
{{ "1250.00"|strip_zeros }}|{{ "12.50"|strip_zeros }}|{{ 7|strip_zeros }}|{{ 2.50|strip_zeros }}
{{ "01310-100"|replace:"-:" }}|{{ "1234.56"|replace:".:," }}|{{ "a:b:c"|replace:"::-" }}|{{ "Account 1"|replace:"Account:Acct" }}
