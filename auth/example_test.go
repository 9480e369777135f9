package auth_test

import (
	"fmt"

	"github.com/partlog/partlog/auth"
)

// A listener's ssl.principal.mapping.rules turn client certificates'
// subjects into user names: the first rule that matches a whole subject
// names the user, DEFAULT keeps the subject as it is.
func ExampleParseMappingRules() {
	rules, err := auth.ParseMappingRules("RULE:^CN=(.*?),OU=ServiceUsers,.*$/$1/, RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L, DEFAULT")
	if err != nil {
		panic(err)
	}
	for _, dn := range []string{
		"CN=kafka-connect,OU=ServiceUsers,O=Acme,C=GB",
		"CN=Alice,OU=Eng,O=Acme,C=GB",
		"CN=bob",
	} {
		name, err := rules.Map(dn)
		fmt.Println(auth.User(name), err)
	}
	// Output:
	// User:kafka-connect <nil>
	// User:alice@eng <nil>
	// User:CN=bob <nil>
}
