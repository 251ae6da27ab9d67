@rem cmd.exe has no exec: npm start runs "exec node scripts/start.js" (on POSIX sh, exec hands the shell's PID to node,
@rem so a signal to npm reaches the host). cmd looks in the current folder first, finds this file and runs the rest as is.
@%*
