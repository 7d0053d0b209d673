// The Kiln policy language again, left-factored for speed: the parser the front end runs first.
//
// Policy.g4 is the language's reference grammar, and its parser is the one that reports syntax
// errors. It states `expr`, `coalesce`, `relation`, `argList` and list literals as alternatives
// that share a whole sub-expression as prefix (`a ? b : c` | `a`), so ANTLR's adaptive
// prediction scans every such sub-expression once per enclosing level before it can choose;
// that was 95% of the front end's time (nodeorder: ~450 ms). Here the shared prefix is parsed
// once and the rest is optional, so every decision needs a token or two of lookahead. The
// language is the same: the front end parses with this grammar (SLL, bail on the first error)
// and only an input this parser rejects goes to Policy.g4's parser, whose diagnostics are
// therefore unchanged. FrontendFastParser.* tests that both grammars accept the same inputs.
//
// Keep it in step with Policy.g4: a change to the language changes both files.
parser grammar PolicyFastParser;

options { tokenVocab = Policy; }

// ---------------------------------------------------------------------------------------------
// Declarations (as in Policy.g4)

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

typeRef
  : name=IDENT ('<' args+=typeRef (',' args+=typeRef)* '>')? (opt='?')?
  ;

// ---------------------------------------------------------------------------------------------
// Statements (as in Policy.g4)

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
// Expressions, lowest precedence first. Factored: `expr`, `coalesce`, `relation`, `argList` and
// the list literal; the rest as in Policy.g4.

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
  | operand=postfix '[' index=expr ']'                                         # Index
  | callee=postfix '(' args=argList? ')'                                       # Call
  | value=primary                                                              # PlainPostfix
  ;

// Positional arguments, or one element with a generator (GeneratorArg when `gen` is present).
argList
  : args+=expr (gen=generator | (',' args+=expr)*)
  ;

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
  | '(' inner=expr ')'                                                         # Paren
  // A comprehension when `gen` is present, else a list literal.
  | '[' (elements+=expr (gen=generator | (',' elements+=expr)* ','?) | ','?) ']'  # ListLit
  | '{' (entries+=mapEntry (',' entries+=mapEntry)*)? ','? '}'                 # MapLit
  | 'resource' '{' (entries+=mapEntry (',' entries+=mapEntry)*)? ','? '}'      # ResourceLit
  | type=IDENT '{' fields+=fieldInit (',' fields+=fieldInit)* ','? '}'         # RecordLit
  ;

mapEntry
  : (keyName=IDENT | keyExpr=expr) ':' value=expr
  ;

fieldInit
  : name=fieldName ':' value=expr
  ;

fieldName
  : IDENT | 'state' | 'from' | 'record' | 'resource' | 'arg' | 'uses' | 'where' | 'in'
  ;
