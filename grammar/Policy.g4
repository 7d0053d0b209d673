// The Kiln policy language (docs/language.md is the reference).
//
// Combined grammar: parser rules first, lexer rules after. Precedence is expressed by layering
// rules (conditional → coalesce → or → and → not → relation → additive → multiplicative → unary
// → postfix → primary). Alternatives are labelled and elements named so the AST builder
// (compiler/parse/ast_builder.cc) never indexes children by position.
//
// Left-factored for speed. Where two alternatives would share a whole sub-expression as prefix
// (`a ? b : c` | `a`), the prefix is parsed once and the rest is optional, so every decision needs
// a token or two of lookahead: written as alternatives, ANTLR's adaptive prediction scanned every
// such sub-expression once per enclosing level before it could choose, 95% of the front end's
// time (nodeorder: ~450 ms), and seconds on a deep expression with a syntax error (issue #16).
// The factored rules carry no label; the AST builder tells the forms apart by whether the
// optional part is present (`then`, `right`, `op`, `gen`).
//
// The front end parses with this one grammar in two stages (compiler/parse/parser.cc): SLL
// prediction, bailing at the first error; then, only if that fails, full LL with our error
// listener, which either parses the file or reports its syntax errors.
grammar Policy;

// ---------------------------------------------------------------------------------------------
// Declarations

policyFile
  : header=policyHeader decls+=decl* EOF
  ;

policyHeader
  : 'policy' (name=IDENT | str=STRING) ';'
  ;

decl
  : 'uses' name=IDENT ';'                                                      # UsesDecl
  | 'const' name=IDENT (':' type=typeRef)? '=' value=expr ';'                  # ConstDecl
  | 'arg' name=IDENT ':' type=typeRef ('=' value=expr)? ('from' source=IDENT? key=STRING)? ';'
                                                                               # ArgDecl
  | 'record' name=IDENT '{' fields+=recordField* '}'                           # RecordDecl
  | 'state' name=IDENT ':' type=typeRef (acrossKw=IDENT sessionsKw=IDENT)? ('=' value=expr)? ';'
                                                                               # StateDecl
  | 'fn' name=IDENT '(' params=paramList? ')' ('->' result=typeRef)? body=block  # FnDecl
  | 'on' points+=IDENT (',' points+=IDENT)* '(' params=paramList? ')' ('->' result=typeRef)?
      body=block                                                               # HandlerDecl
  ;

recordField
  : name=fieldName ':' type=typeRef ('=' value=expr)? ('from' key=STRING)? ';'
  ;

paramList
  : params+=param (',' params+=param)*
  ;

param
  : name=IDENT ':' type=typeRef
  ;

// A named type (`map<Job, float>?`), or a tuple type when `tuple` is present: `(string, int)`.
typeRef
  : (name=IDENT ('<' args+=typeRef (',' args+=typeRef)* '>')?
     | tuple='(' args+=typeRef (',' args+=typeRef)+ ')') (opt='?')?
  ;

// ---------------------------------------------------------------------------------------------
// Statements

block
  : '{' stmts+=stmt* '}'
  ;

stmt
  : kw=('let' | 'var') name=IDENT (':' type=typeRef)? '=' value=expr ';'       # LetStmt
  | target=expr op=('=' | '+=' | '-=' | '*=' | '/=') value=expr ';'            # AssignStmt
  | 'if' 'let' name=IDENT '=' value=expr then=block ('else' otherwise=elseBranch)?  # IfLetStmt
  | 'if' cond=expr then=block ('else' otherwise=elseBranch)?                   # IfStmt
  | 'for' first=IDENT (',' second=IDENT)? 'in' range=expr body=block           # ForStmt
  | 'return' value=expr? ';'                                                   # ReturnStmt
  | 'break' ';'                                                                # BreakStmt
  | 'continue' ';'                                                             # ContinueStmt
  | body=block                                                                 # BlockStmt
  | value=expr ';'                                                             # ExprStmt
  ;

elseBranch
  : body=block                                                                 # ElseBlock
  | 'if' 'let' name=IDENT '=' value=expr then=block ('else' otherwise=elseBranch)?  # ElseIfLet
  | 'if' cond=expr then=block ('else' otherwise=elseBranch)?                   # ElseIf
  ;

// ---------------------------------------------------------------------------------------------
// Expressions, lowest precedence first. `expr`, `coalesce`, `relation`, `argList` and the list
// literal are left-factored (see the file comment): the shared operand is parsed once and the
// rest of the alternative is optional.

// ConditionalOp when `then` is present.
expr
  : cond=coalesce ('?' then=expr ':' otherwise=expr)?
  ;

// CoalesceOp when `right` is present.
coalesce
  : left=orExpr (op='??' right=coalesce)?
  ;

orExpr
  : left=orExpr op=('or' | '||') right=andExpr                                 # Or
  | value=andExpr                                                              # PlainOr
  ;

andExpr
  : left=andExpr op=('and' | '&&') right=notExpr                               # And
  | value=notExpr                                                              # PlainAnd
  ;

notExpr
  : op=('not' | '!') operand=notExpr                                           # Not
  | value=relation                                                             # PlainNot
  ;

// Compare when `op` is present.
relation
  : left=additive (op=('==' | '!=' | '<' | '<=' | '>' | '>=' | 'in') right=additive)?
  ;

additive
  : left=additive op=('+' | '-') right=multiplicative                          # AddSub
  | value=multiplicative                                                       # PlainAdditive
  ;

multiplicative
  : left=multiplicative op=('*' | '/' | '%') right=unary                       # MulDiv
  | value=unary                                                                # PlainMultiplicative
  ;

unary
  : op='-' operand=unary                                                       # Negate
  | value=postfix                                                              # PlainUnary
  ;

postfix
  : operand=postfix '.' field=fieldName                                        # Select
  | operand=postfix '.' position=INT                                           # TupleElement
  | operand=postfix '[' index=expr ']'                                         # Index
  | callee=postfix '(' args=argList? ')'                                       # Call
  | value=primary                                                              # PlainPostfix
  ;

// Positional arguments, or one element with a generator (GeneratorArg when `gen` is present).
argList
  : args+=expr (gen=generator | (',' args+=expr)*)
  ;

// `EXPR for x in COLL where COND order by KEY desc` inside [...] or an aggregate call. `order`,
// `by`, `asc`, `desc` (and `flag`/`prefix` after `from`) are contextual words, checked by the AST
// builder, so they stay usable as names.
generator
  : 'for' first=IDENT (',' second=IDENT)? 'in' source=expr
    ('where' filter=expr)? (orderKw=IDENT byKw=IDENT key=expr dir=IDENT?)?
  ;

primary
  : value=INT                                                                  # IntLit
  | value=FLOAT                                                                # FloatLit
  | value=STRING                                                               # StringLit
  | value=DURATION                                                             # DurationLit
  | value=QUANTITY                                                             # QuantityLit
  | value=('true' | 'false')                                                   # BoolLit
  | 'none'                                                                     # NoneLit
  | name=IDENT                                                                 # Name
  // A tuple when there is more than one element: `(node, i)`.
  | '(' inner=expr (',' rest+=expr)* ')'                                       # Paren
  // A comprehension when `gen` is present, else a list literal.
  | '[' (elements+=expr (gen=generator | (',' elements+=expr)* ','?) | ','?) ']'  # ListLit
  | '{' (entries+=mapEntry (',' entries+=mapEntry)*)? ','? '}'                 # MapLit
  | 'resource' '{' (entries+=mapEntry (',' entries+=mapEntry)*)? ','? '}'      # ResourceLit
  // At least one field, so `if ready {}` stays an if with an empty block.
  | type=IDENT '{' fields+=fieldInit (',' fields+=fieldInit)* ','? '}'         # RecordLit
  ;

mapEntry
  : (keyName=IDENT | keyExpr=expr) ':' value=expr
  ;

fieldInit
  : name=fieldName ':' value=expr
  ;

// Field names may be words that are keywords elsewhere (`queue.state`).
fieldName
  : IDENT | 'state' | 'from' | 'record' | 'resource' | 'arg' | 'uses' | 'where' | 'in'
  ;

// ---------------------------------------------------------------------------------------------
// Lexer

// Durations and quantities come before INT/FLOAT so `10m` is one token, not `10` then `m`.
DURATION : DIGITS ('.' DIGITS)? DUR_UNIT (DIGITS ('.' DIGITS)? DUR_UNIT)* ;
QUANTITY : DIGITS ('.' DIGITS)? ('Ki' | 'Mi' | 'Gi' | 'Ti' | 'Pi' | 'Ei' | 'k' | 'M' | 'G' | 'T' | 'P' | 'E') ;
FLOAT    : DIGITS '.' DIGITS EXPONENT? | DIGITS EXPONENT ;
INT      : DIGITS ;
STRING   : '"' (~["\\\r\n] | '\\' .)* '"' ;
// A string missing its closing quote: one token, so the error names it instead of its pieces.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' .)* ;
IDENT    : [A-Za-z_] [A-Za-z0-9_]* ;

LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS            : [ \t\r\n]+ -> skip ;

// Anything else becomes one token so the parser, not the lexer, reports it with our listener.
ERROR_CHAR : . ;

fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
fragment DUR_UNIT : 'ns' | 'us' | 'ms' | 's' | 'm' | 'h' | 'd' ;
