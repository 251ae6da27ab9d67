// A T-SQL grammar check from npm: antlr4ts-sql's TSqlLexer/TSqlParser (the grammars-v4 T-SQL grammar, prebuilt
// for antlr4ts 0.5.0-alpha.4). It knows nothing of our tables; it says whether a text is T-SQL syntax.

import { ANTLRInputStream, BailErrorStrategy, CommonTokenStream, type CharStream } from 'antlr4ts';
import { PredictionMode } from 'antlr4ts/atn/PredictionMode';
import { ParseCancellationException } from 'antlr4ts/misc/ParseCancellationException';
import { CaseChangingStream, TSqlLexer, TSQLGrammar } from 'antlr4ts-sql';

/** Collects the lexer's and the parser's syntax errors (fits both listener types: it reads no symbol). */
function collectingListener() {
  const errors: string[] = [];
  return {
    errors,
    syntaxError(_recognizer: unknown, _symbol: unknown, line: number, column: number, message: string): void {
      // the grammar's "expecting {…}" lists run to thousands of tokens: the start says enough
      errors.push(`${line}:${column} ${message.length > 160 ? `${message.slice(0, 160)}…` : message}`);
    },
  };
}

/** The syntax errors of one batch (no GO separators inside), empty when the grammar accepts all of it. */
export function tsqlSyntaxErrors(batch: string): string[] {
  // The fast SLL pass decides most texts; only a text it cannot accept is parsed again in full LL mode, which
  // is exact and reports the errors (the two-stage strategy ANTLR recommends).
  const fast = parse(batch, 'sll');
  return fast.length === 0 ? fast : parse(batch, 'll');
}

function parse(batch: string, mode: 'sll' | 'll'): string[] {
  const listener = collectingListener();
  // the grammar's keywords are upper case: the stream upper-cases what the lexer sees, as antlr4ts-sql itself does
  const lexer = new TSqlLexer(new CaseChangingStream(new ANTLRInputStream(batch), true) as unknown as CharStream);
  lexer.removeErrorListeners();
  lexer.addErrorListener(listener);
  const parser = new TSQLGrammar.TSqlParser(new CommonTokenStream(lexer));
  parser.removeErrorListeners();
  parser.addErrorListener(listener);
  if (mode === 'sll') {
    parser.interpreter.setPredictionMode(PredictionMode.SLL);
    parser.errorHandler = new BailErrorStrategy();
  }
  try {
    parser.tsql_file(); // batch* EOF: trailing text that is not a statement is an error too
  } catch (err) {
    if (!(err instanceof ParseCancellationException)) throw err;
    return ['SLL pass failed'];
  }
  return listener.errors;
}

/** Splits a sqlcmd script into its batches at lines holding only GO (as sqlcmd and SSMS do). */
export function scriptBatches(script: string): string[] {
  return script
    .split(/^[ \t]*GO[ \t]*$/im)
    .map((batch) => batch.trim())
    .filter((batch) => batch.replace(/^--.*$/gm, '').trim() !== '');
}
