import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import type { SearchFilter } from "../domain/search.js";

/** Escapes LIKE wildcards so a client's % or _ matches itself. */
function likePattern(value: string, prefix: string, suffix: string): string {
  return `${prefix}${value.replace(/[\\%_]/g, (c) => `\\${c}`)}${suffix}`;
}

const COMPARISON = { gt: ">", lt: "<", gte: ">=", lte: "<=" } as const;

/** One SQL condition per filter, all combined with AND; text compares case-insensitively. */
export function searchCondition<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  filters: readonly SearchFilter[],
): Expression<SqlBool> {
  return eb.and(filters.map((filter) => condition(filter)));
}

function condition(filter: SearchFilter): Expression<SqlBool> {
  const column = sql.ref(filter.column);
  const subject = filter.type === "text" ? sql`lower(${column})` : column;
  const value = filter.value;
  switch (filter.operator) {
    case "eq":
      return sql<SqlBool>`${subject} = ${value}`;
    case "ne":
      return sql<SqlBool>`(${subject} <> ${value} or ${column} is null)`;
    case "contains":
      return sql<SqlBool>`${subject} like ${likePattern(String(value), "%", "%")} escape '\\'`;
    case "starts_with":
      return sql<SqlBool>`${subject} like ${likePattern(String(value), "", "%")} escape '\\'`;
    case "ends_with":
      return sql<SqlBool>`${subject} like ${likePattern(String(value), "%", "")} escape '\\'`;
    default:
      return sql<SqlBool>`${subject} ${sql.raw(COMPARISON[filter.operator])} ${value}`;
  }
}
