// Command ceiling is the yardstick of scripts/load.sh: a bare net/http
// server that answers every request with one fixed JSON body, the shape of
// a verify response, and does nothing else. Measured in the same run as
// Latchkey, on the same machine and with the same load generator, its
// requests per second are the most any Go HTTP handler could serve there,
// and Latchkey's verify is reported as a fraction of it.
//
// Usage: ceiling -addr 127.0.0.1:PORT -body FILE
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	bodyFile := flag.String("body", "", "file holding the response body (a verify response)")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})))
}
