// Log Analytics workspace + workspace-based Application Insights.
//
// Ingestion authentication. The function app always gets APPLICATIONINSIGHTS_AUTHENTICATION_STRING
// (Authorization=AAD;ClientId=<identity>), so the Functions host sends its telemetry (requests, traces,
// exceptions) with the managed identity; the identity gets Monitoring Metrics Publisher here, the role the docs
// require for Entra ingestion. The app's own custom metrics (asyncresponse.*) come from the Application Insights
// SDK inside the Node worker, whose exporter does not read APPLICATIONINSIGHTS_AUTHENTICATION_STRING; the app
// passes the identity's credential to it in code (shared/telemetry/setup.ts). That path has not been exercised
// against Azure yet, so local (instrumentation-key) auth stays ENABLED by default: after disableLocalAuth=true,
// check that customMetrics still arrive (docs/azure.md), else the workbook and two alerts lose their data.

@description('Log Analytics workspace name.')
param logAnalyticsName string

@description('Application Insights component name.')
param appInsightsName string

@description('Azure region.')
param location string

@description('Tags for the resources.')
param tags object = {}

@description('Days of log retention in the workspace.')
@minValue(30)
@maxValue(730)
param retentionInDays int = 30

@description('true = Application Insights accepts Entra-authenticated telemetry only (see the note at the top).')
param disableLocalAuth bool = false

@description('Object (principal) id of the function app identity (gets Monitoring Metrics Publisher).')
param principalId string

// Built-in role: Monitoring Metrics Publisher (publishes all telemetry types, despite its name).
var monitoringMetricsPublisherRoleId = '3913510d-42f4-4e42-8a64-420c390055eb'

resource workspace 'Microsoft.OperationalInsights/workspaces@2022-10-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    IngestionMode: 'LogAnalytics'
    DisableLocalAuth: disableLocalAuth
  }
}

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, principalId, monitoringMetricsPublisherRoleId)
  scope: appInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisherRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Entra-authenticated telemetry ingestion from the function app'
  }
}

@description('Application Insights resource id (scope of the workbook queries and the log alerts).')
output appInsightsId string = appInsights.id

@description('Application Insights name.')
output appInsightsName string = appInsights.name

@description('APPLICATIONINSIGHTS_CONNECTION_STRING (an ingestion address and key, not a credential once local auth is off).')
output connectionString string = appInsights.properties.ConnectionString

@description('Log Analytics workspace resource id.')
output workspaceId string = workspace.id
