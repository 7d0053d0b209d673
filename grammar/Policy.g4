// Placeholder: the policy language grammar (issue 3) replaces this file.
grammar Policy;
policyFile : ID* EOF ;
ID : [a-z]+ ;
WS : [ \t\r\n]+ -> skip ;
