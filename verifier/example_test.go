package verifier_test

import (
	"fmt"
	"log"
	"net/http"

	"latchkey.dev/verifier"
)

// A service that serves GET /orders to tokens with read:orders, issued by
// Latchkey for https://orders.example.com.
func Example() {
	v, err := verifier.New(verifier.Config{Issuer: "https://auth.example.com", Audience: "https://orders.example.com"})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("GET /orders", v.Require("read:orders")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, _ := verifier.ClaimsFrom(r.Context())
		fmt.Fprintf(w, "orders of %s\n", claims.OrganizationID)
	})))
	// log.Fatal(http.ListenAndServe(":8080", nil))
}
