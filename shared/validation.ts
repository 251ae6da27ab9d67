// Validation vocabulary shared by the engine and the HTTP layer: a field problem and the id patterns.
// It lives here, not in http/, so the engine (transport/, channel/) never depends on the HTTP layer.

export interface FieldError {
  field: string;
  message: string;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
