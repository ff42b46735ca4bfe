"""The model side of a trial: the agent loop, what each model accepts and costs, and the providers that call them."""
