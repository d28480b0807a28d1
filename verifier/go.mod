module latchkey.dev/verifier

go 1.24

require github.com/golang-jwt/jwt/v5 v5.3.1
