module github.com/adkbreaker/adkbreaker

go 1.26.8

require github.com/sony/gobreaker/v2 v2.4.0
