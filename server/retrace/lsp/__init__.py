"""The JSON-RPC server (pygls 2): registration, handlers, and the services behind them."""
